"""ament_python set-up for continuum_ctrl; also installable with `pip install -e .`."""

from glob import glob

from setuptools import find_packages, setup

package_name = 'continuum_ctrl'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml') + glob('config/*.rviz')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='continuum_ctrl maintainers',
    maintainer_email='maintainers@continuum-ctrl.invalid',
    description='Computed-torque control of continuum (PMA) and rigid arms for ROS 2.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'continuum-ctrl = continuum_ctrl.cli:main',
            'controller_node = continuum_ctrl.ros.controller_node:main',
            'simulator_node = continuum_ctrl.ros.simulator_node:main',
        ],
    },
)
